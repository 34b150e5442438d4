"""Spack: the tool and its pins, site overlays, reading a lock into build records."""
