"""Answerer errors.

    PmError
    └── AnswererError
"""

from shared.errors import PmError


class AnswererError(PmError):
    code = "answerer"
    title = "Answerer error"
