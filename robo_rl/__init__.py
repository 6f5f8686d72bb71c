"""robo_rl: reinforcement learning for real robots."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("robo-rl")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
