"""mom_pipeline: Maximum Optimality Margin for contextual and inverse linear programming."""

__version__ = "0.1.0"

# Importing the package changes no process-wide setting: the malloc settings that keep freed
# temporaries for the next Newton step (`allocator.keep_freed_memory`) are applied by a Kedro
# run (`hooks.ProcessSettingsHooks`) and by its trial workers (`experiments.compute`), and a
# script or notebook calls `keep_freed_memory()` itself if it wants them.
