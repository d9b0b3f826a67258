"""The names a config gives to runs, datasets and splits: each becomes a file name."""

# Names of runs, datasets and splits (the schema's $defs/name): a letter or digit, then letters, digits, '_', '.'
# and '-', never '..'. Such a name is one file name on every platform.
NAME_PATTERN = r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.-]*$"
NAME_RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit, without '..'"
