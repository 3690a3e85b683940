// The activation page: sends the typed user key to the main process and shows why an activation failed.
document.getElementById("form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const result = await window.licensing.activate(document.getElementById("key").value);
  if (!result.ok) document.getElementById("message").textContent = `${result.reason}: ${result.message}`;
});
