"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-612): the entities they are set
on, the rates they bound, and how long a client over its quota is throttled.

Pure: the broker feeds bytes, request time and connections in, with the time
from its clock, and gets throttle times out; where a quota is stored and how a
connection is muted live above (handlers, network).
"""
