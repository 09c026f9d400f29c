"""Shared infrastructure, at the bottom of the house: it imports no app.

Database routing to a replica, advisory locks on a session of their own, queueing a task on commit, the run
lock and process supervision, the embedded PostgreSQL, the Redis broker for django-q2, and the neutral domain
errors and input checks every app and door uses. Each module knows Django and its libraries, never our models.
"""
