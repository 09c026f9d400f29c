"""Real files built in tests: documents, office files, records, archives, email and Outlook messages."""
