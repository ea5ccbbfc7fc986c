"""The broker process: it puts the layers together, starts and stops them."""
