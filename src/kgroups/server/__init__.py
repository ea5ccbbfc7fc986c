"""The broker: asyncio server, connections, request dispatch and configuration."""
