"""One module per chapter: a frozen ``Config`` dataclass and
``run(config) -> Result``."""
