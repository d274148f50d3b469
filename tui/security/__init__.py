"""Permission levels, the security policy, command risk and the approval protocol."""
