// The one call the activation page makes into the main process.
const { contextBridge, ipcRenderer } = require("electron");

contextBridge.exposeInMainWorld("licensing", { activate: (userKey) => ipcRenderer.invoke("activate", userKey) });
