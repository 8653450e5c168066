# skillmem's installer for Windows: downloads the x64 release archive, checks it against the
# release's SHA256SUMS, and puts skillmem.exe in $env:SKILLMEM_INSTALL_DIR (default
# %LOCALAPPDATA%\skillmem\bin), which it adds to the user's PATH.
#   powershell -ExecutionPolicy Bypass -c "irm https://github.com/@REPO@/releases/latest/download/skillmem-installer.ps1 | iex"
# The release workflow writes @REPO@ and @VERSION@.
$ErrorActionPreference = 'Stop'
$repo = '@REPO@'
$version = '@VERSION@'
$base = if ($env:SKILLMEM_DOWNLOAD_URL) { $env:SKILLMEM_DOWNLOAD_URL } else { "https://github.com/$repo/releases/download/v$version" }
$dir = if ($env:SKILLMEM_INSTALL_DIR) { $env:SKILLMEM_INSTALL_DIR } else { Join-Path $env:LOCALAPPDATA 'skillmem\bin' }
$target = 'x86_64-pc-windows-msvc'
$archive = "skillmem-$target.zip"
$tmp = Join-Path ([IO.Path]::GetTempPath()) ([Guid]::NewGuid())
New-Item -ItemType Directory -Path $tmp | Out-Null
try {
  Invoke-WebRequest -UseBasicParsing "$base/$archive" -OutFile (Join-Path $tmp $archive)
  Invoke-WebRequest -UseBasicParsing "$base/SHA256SUMS" -OutFile (Join-Path $tmp 'SHA256SUMS')
  $line = Get-Content (Join-Path $tmp 'SHA256SUMS') | Where-Object { $_ -match " $([regex]::Escape($archive))$" }
  $want = if ($line) { ($line -split ' ')[0] } else { '' }
  $have = (Get-FileHash -Algorithm SHA256 (Join-Path $tmp $archive)).Hash.ToLower()
  if (-not $want -or $want -ne $have) { throw "skillmem: $archive does not match SHA256SUMS (expected $want, got $have)" }
  Expand-Archive -Path (Join-Path $tmp $archive) -DestinationPath $tmp
  New-Item -ItemType Directory -Force -Path $dir | Out-Null
  Copy-Item (Join-Path $tmp "skillmem-$target\skillmem.exe") (Join-Path $dir 'skillmem.exe') -Force
  $path = [Environment]::GetEnvironmentVariable('Path', 'User')
  if (-not ($path -split ';' | Where-Object { $_ -eq $dir })) {
    [Environment]::SetEnvironmentVariable('Path', "$dir;$path", 'User')
    Write-Host "added $dir to your PATH (new terminals see it)"
  }
  Write-Host "installed $(& (Join-Path $dir 'skillmem.exe') --version) to $dir"
  Write-Host 'next: skillmem setup claude-code   (or opencode, pi, gemini-cli, codex, copilot)'
} finally {
  Remove-Item -Recurse -Force $tmp
}
