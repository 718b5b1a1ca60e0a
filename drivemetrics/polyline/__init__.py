"""Polyline geometry shared by lane topology and vectorised-map AP (layer 1: imports only torch / numpy)."""
