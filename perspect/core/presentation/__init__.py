"""What only the front ends use: plain and rich renderings of a result, progress bars, and the
preparation of a process before a full-screen UI takes its standard streams. Nothing below the
CLI, the TUI and the server imports it (pyproject.toml's contracts)."""
