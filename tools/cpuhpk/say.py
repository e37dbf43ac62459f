"""What the tools say to the user: a progress line, or the one line of an error.

log() prints 'cpuhp-kunit: <what is being done>'; a step that cannot go
on raises PrepareError, whose message is the one line the tool prints
('cpuhp-kunit: error: <message>') before it exits.
"""


class PrepareError(Exception):
    """A step failed; the message is the one line to show the user."""


def log(msg: str) -> None:
    print(f'cpuhp-kunit: {msg}', flush=True)

