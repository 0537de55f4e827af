"""Task generators. Each one is vectorised and seeded per seed, so that seed ``s``
always yields the same data whichever other seeds share its batch."""
