"""Layer 3: sessions, performance references, summaries."""
