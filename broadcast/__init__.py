"""What lab's open pages listen on: the channel-layer groups, named once.

Below every app: the consumers (runs) join these groups, and runs' watcher and auth_flows'
services push to them, so neither app imports the other for a name. No Django.
"""
