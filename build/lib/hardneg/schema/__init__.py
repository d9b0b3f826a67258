"""The configuration's mechanics, below every domain: the schema file shipped with the package and its validator
that fills defaults (:mod:`.validation`), config files read strictly and hashed (:mod:`.files`), validated
sections read into values and dataclasses (:mod:`.values`) and the rule for names (:mod:`.names`).

Nothing here knows a method, a dataset adapter or a stage: the checks that do belong to their domains, and
:mod:`hardneg.pipeline.config` composes them.
"""
