"""An OpenAPI spec's operations as tools: the spec reader and the tool adapter."""
