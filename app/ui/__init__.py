"""The Textual front end. Only this package imports textual."""
