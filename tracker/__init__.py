"""Tabletop tracker: overhead-camera tracking and refereeing of miniature wargames.

Stages (see ARCHITECTURE.md): sources → calibration → detection → tracking → world
state → rules → rulings → web page and log.
"""

import os as _os

# FFmpeg's own decoder chatter ("[mjpeg @ 0x...] dht: invalid len") is not for users:
# a corrupt or truncated video is reported once, in one line, by tracker.sources.
_os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")
_os.environ.setdefault("OPENCV_LOG_LEVEL", "ERROR")

__version__ = "0.1.0"
