"""Provider adapters. Importing this package must not import any SDK (they are slow to import)."""
