"""The shared store's address: a password in it is refused, and every printed form is
redacted (commcheck.dburl), in the site file too."""

from __future__ import annotations

import pytest

from commcheck import dburl
from commcheck.site import SiteError, sitefile
from tests.conftest import REPO

SECRET = 's3cr:et@x'
QUOTED = SECRET.replace(':', '%3A').replace('@', '%40')
WITH_PASSWORD = [f'postgresql://commcheck:{QUOTED}@db/c',
                 f'postgres://u:{QUOTED}@h:5433/c?sslmode=require',
                 f"host=db dbname=c password='{SECRET}'", 'host=db password=s3cret dbname=c',
                 'postgresql://u@db/c?password=s3cret&sslmode=require',
                 'postgresql://u:s3cret@s3cret@db/c']
WITHOUT = ['postgresql://commcheck@db.site/commcheck', 'service=commcheck',
           'host=db dbname=commcheck user=commcheck_writer', 'postgresql://u:@db/c',
           'postgresql:///commcheck?host=/run/postgresql']


@pytest.mark.parametrize('address', WITH_PASSWORD)
def test_a_password_is_refused_and_redacted(address):
    problem = dburl.password_problem(address, 'COMMCHECK_HISTORY')
    assert problem and problem.startswith('COMMCHECK_HISTORY: ') and 'PGPASSFILE' in problem
    for word in ('s3cret', 's3cr', 'et%40x', SECRET):
        assert word not in problem and word not in dburl.redact(address)
    assert dburl.HIDDEN in dburl.redact(address)


@pytest.mark.parametrize('address', WITHOUT)
def test_an_address_without_a_password_is_kept_as_it_is(address):
    assert dburl.password_problem(address) is None
    assert dburl.redact(address) == address


def test_redaction_reaches_into_a_message_that_quotes_an_address():
    said = 'could not connect to postgresql://a:pw1@h/d (password=pw2 rejected)'
    assert 'pw1' not in dburl.redact(said) and 'pw2' not in dburl.redact(said)


def test_the_site_file_refuses_a_history_address_with_a_password_without_printing_it():
    base = (REPO / 'config' / 'sites' / 'example-slurm.yaml').read_text()
    site = sitefile.parse(base + '\nhistory: service=commcheck\n', 'x.yaml')
    assert site.history == 'service=commcheck'
    with pytest.raises(SiteError) as err:
        sitefile.parse(base + '\nhistory: postgresql://w:hunter2@db/c\n', 'x.yaml')
    assert 'hunter2' not in str(err.value) and 'x.yaml:' in str(err.value)
    assert 'contains a password' in str(err.value)
