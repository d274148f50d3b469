"""The agent: the loop, the conversation, model providers, sub-agents and hooks."""
