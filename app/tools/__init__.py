"""The coding tools the model can call: read, list, glob, grep, shell, write, edit, recall."""
