"""GitHub: workflow-command output for Actions, and (later) the REST client and the gate flow.

Kept import-light: nothing here imports requests until a REST call is made.
"""
