"""The search pipeline over an index and the models: retrieve, judge, merge, substantiate, order."""
