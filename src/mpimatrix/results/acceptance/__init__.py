"""Site acceptance against the contract: requirements, verdicts, the signed record."""
