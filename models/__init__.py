"""The shipped model bundle (data only): see models/README.md."""
