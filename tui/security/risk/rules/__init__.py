"""The rules, one family a module: each judges a program by its arguments and input."""
