"""The built-in tools: a family with parts in a folder, a small one in a file; `catalog` puts
them in the order the model sees."""
