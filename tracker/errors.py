"""User-facing errors: one line that names the problem and the fix, never a traceback."""


class UserError(Exception):
    """A mistake in the user's input (path, config, camera, image). The CLI prints
    ``error: <message>`` and exits non-zero; the web API answers 4xx with the message."""

    exit_code = 2


class ConfigError(UserError):
    """A game config that is missing, unreadable, or has a wrong or misspelt field."""


class SourceError(UserError):
    """A video file, image folder or camera that cannot be opened or read."""


class CalibrationError(UserError):
    """Calibration that cannot be done from what was given (no board, too few markers...)."""
