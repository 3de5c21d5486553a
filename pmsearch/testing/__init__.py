"""What tests and benchmarks start in place of the outside world: a scripted
OpenAI-compatible model (for a model that must misbehave on purpose), its scripted
"brains", and a real Dovecot IMAP server in a directory of its own."""
