"""Query sets and generators in Chinese and English. Imports nothing else of attnlab."""
