"""Table maintenance commands: VACUUM, OPTIMIZE, RESTORE, protocol upgrades, manifests, CONVERT."""
