/* A shared library without the plugin entry point. */
int rocflow_plugin_entry_misspelled(void) { return 1; }
