"""The Textual terminal UI (`perspect tui`). Only this package imports textual."""
