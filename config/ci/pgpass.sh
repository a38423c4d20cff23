# Sourced by every CI job (and after-script) that reaches the shared history store, in bash:
#     . config/ci/pgpass.sh
# The store is named by COMMCHECK_HISTORY, a CI variable holding a libpq URL or service=...
# without a password (commcheck refuses one that carries a password). Its password, when the
# site gives it this way, is the masked CI variable COMMCHECK_HISTORY_PASSWORD: written here
# into a PGPASSFILE of mode 0600 (libpq's own place for it) by shell builtins only, so it never
# appears on a command line or in a process list, and never in an xtrace; then the variable is
# unset, so no process the job starts inherits it. Without COMMCHECK_HISTORY_PASSWORD nothing
# is done: libpq then finds the password where the runner's account keeps it (~/.pgpass, a
# service file named by PGSERVICEFILE).

case $- in *x*) _commcheck_xtrace=1; set +x ;; *) _commcheck_xtrace= ;; esac
if [ -n "${COMMCHECK_HISTORY_PASSWORD:-}" ]; then
    # The job's own file: beside the checkout (removed by the next job's git clean) or in
    # GitHub's per-job temporary directory.
    PGPASSFILE="${RUNNER_TEMP:-$PWD}/.commcheck-pgpass"
    _commcheck_pw=${COMMCHECK_HISTORY_PASSWORD//\\/\\\\}
    _commcheck_pw=${_commcheck_pw//:/\\:}
    (umask 077 && : >"$PGPASSFILE")
    chmod 600 "$PGPASSFILE"
    printf '*:*:*:*:%s\n' "$_commcheck_pw" >"$PGPASSFILE"
    unset _commcheck_pw COMMCHECK_HISTORY_PASSWORD
    export PGPASSFILE
fi
[ -z "$_commcheck_xtrace" ] || set -x
unset _commcheck_xtrace
