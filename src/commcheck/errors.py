"""The one kind of error a user sees as a single ``ERROR:`` line and exit code 2.

Every reader and validator raises a subclass (a bad site file, an unreadable history, a
reference file ReFrame would trip over, bad arguments), with a message that names the file,
the place in it and what to do; the ``commcheck`` command prints it and nothing else.
"""


class UserError(Exception):
    """Bad input: the message is one line naming the file (or option) and the problem."""
