"""The search tools: ``glob_search`` (files by name) and ``grep_search`` (text in files).

One module a tool (``glob_search``, ``grep_search``); both run ripgrep where the target has it
(``ripgrep``) and a pure-Python walk where it does not (``walk``), with one glob dialect
(``globs``); ``grep_query`` reads a grep call's options and ``grep_engines`` runs them.
"""
