"""Layer 4: the generated ReFrame configuration and the site's systems."""
