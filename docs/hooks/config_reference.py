"""MkDocs hook: the page reference/configuration.md, generated from the configuration schema and the registered
methods each time the site is built (:mod:`hardneg.pipeline.config_reference`), so it cannot drift from them. A
schema key without a description stops the build."""

from mkdocs.structure.files import File

from hardneg.pipeline.config_reference import config_reference

PAGE = "reference/configuration.md"


def on_files(files, config):
    """Add the generated page to the site's files."""
    files.append(File.generated(config, PAGE, content=config_reference()))
    return files
