"""Model providers: the OpenAI Chat Completions and Anthropic Messages wire formats."""
