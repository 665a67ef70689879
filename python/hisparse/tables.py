"""The outcome structs' rows as dicts and as pandas DataFrames (plan, advise and simulate results share them).

Each bound struct class of hisparse._core names its columns in order in its `fields` tuple (python/bindings/module.cpp,
one list per struct), so the tables here name no field themselves."""


def pandas_module(what):
    """pandas, imported only when a DataFrame is asked for."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError(f"{what}.to_pandas() needs pandas, which is not installed (pip install pandas); "
                          f"{what}.table() gives the same rows as dicts without it") from e
    return pandas


def struct_rows(structs):
    """One dict per struct, its `fields` in order (an empty list gives no row)."""
    return [{name: getattr(s, name) for name in type(s).fields} for s in structs]


def struct_frame(what, structs, struct_class):
    """The structs as a DataFrame whose columns are struct_class.fields (also when there is no row)."""
    return pandas_module(what).DataFrame(struct_rows(structs), columns=list(struct_class.fields))
