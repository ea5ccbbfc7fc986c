"""The network: accepting connections, framing, TLS and SASL. What a request
means is kgroups.handlers' business."""
