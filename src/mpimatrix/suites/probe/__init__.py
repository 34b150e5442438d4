"""The project's own probes (placement, ping-pong): what they print."""
