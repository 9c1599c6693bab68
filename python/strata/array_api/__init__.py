"""The modules of strata's Array API namespace, one per chapter of the
standard (as Cubed's cubed/array_api/): array_object (strata.Array),
creation_functions, data_type_functions, elementwise_functions,
indexing_functions, linear_algebra_functions, manipulation_functions,
searching_functions, set_functions, sorting_functions,
statistical_functions, utility_functions, inspection.

The namespace itself is the `strata` package, which exports their public
names; this package exports nothing of its own. docs/python-api.md has the
layers and the rules (modules import downward only).
"""
