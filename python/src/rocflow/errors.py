"""What a campaign says when the user's input is wrong: one line each, exit code 2."""


class UserError(Exception):
    """An input or option the user gave that cannot be used, worded for them."""

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.hint = hint
