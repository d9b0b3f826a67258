"""Code the tests share. A test module imports from here (and from conftest.py files), never from another test
module (tests/project/test_layout.py checks it):

* ``workflow``: the one Snakemake runner, ``write_config`` and the other helpers of runs through the Snakefile;
* ``builds``: tiny workflows built once per test session and copied for the tests that change files;
* ``configs``: the tiny configs several test files run;
* ``dense``, ``training``: the tiny dense-retrieval dataset, tokenizer and cache; training on them;
* ``files``, ``rankings``, ``tables``, ``user_data``: hand-made input files, rankings and tables;
* ``reliability``: runs paused at a known point (``tests/faults/sitecustomize.py``), digests of artifacts;
* ``browser``: a headless chromium for the report test.
* ``imports``: the package's imports read statically, for the import policy's test.
"""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # the repository (the checkout the tests run in)
