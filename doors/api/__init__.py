"""DRF plumbing both APIs share: authentication, permissions, errors, parsers, throttles, schema helpers."""
