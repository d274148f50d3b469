"""The built-in tool families, one a file; `catalog` puts them in the order the model sees."""
