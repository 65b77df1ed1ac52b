"""``sleuth demo`` and ``sleuth ask``: the whole loop on embedded defaults, on one machine."""
