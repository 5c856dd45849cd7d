"""Query to candidates: retrieval backends behind one interface, and the `Searcher` front door."""
