"""Layer 3: ReFrame plugins, fixtures, the launch vocabulary and a scheduler backend."""
